"""Environment adapters: single, vector, multi-agent."""
