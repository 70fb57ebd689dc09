"""The question and the answer: the Workload asked, the Answer returned, its summary, bands and texts."""
