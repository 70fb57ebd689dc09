"""gpukb probe: run a workload's plan on the local GPU and write what it measured as a knowledge-base entry."""
