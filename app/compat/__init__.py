"""APIs shaped like other memory services, so their existing clients work against workmem.

Each adapter is a thin translation over the services ``/v1`` uses; none holds a rule of its own.
"""
