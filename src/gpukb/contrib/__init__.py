"""Contributor tools: lint and its checks, rule tests, impact reports, the figures claims quote, entry texts, scenarios."""
