"""Basics every layer shares: errors that name their place, the message table, units, number formats and fixed words."""
