import os as _os
import secrets as _secrets

# Work across tenants takes the service key (docs/operations.md, "Tenant tokens"): every
# benchmark's databases register this one, and the servers they start inherit it.
_os.environ.setdefault("WORKMEM_SERVICE_KEY", _secrets.token_urlsafe(32))
