"""The rule language: whitelisted expressions, restricted explain templates, and the kinds of facts rules match."""
