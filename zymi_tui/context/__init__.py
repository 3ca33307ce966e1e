"""Context engine (STAND-IN, see builder.py): replaced by the context issue's package at merge."""
