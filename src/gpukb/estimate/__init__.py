"""The estimates behind an answer: resolving a workload, planning GPUs, latency targets, deadlines, RL, energy, bands."""
