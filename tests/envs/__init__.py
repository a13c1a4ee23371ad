"""Environment adapters (AEC, Parallel, Gymnasium, vector, multi-agent) and the ecosystem."""
