"""The rules engine: durable-rules behind one module, the rules an ask can reach, and the trace of what fired."""
