"""The knowledge base: typed entries (schema, kinds), loading with positions, the compiled rules, caching and versions."""
