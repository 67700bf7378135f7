"""Language-model access: the ports services call, the providers behind them, fakes for tests.

Services import ``app.llm.ports`` only; concrete providers are wired by the composition root.
"""
