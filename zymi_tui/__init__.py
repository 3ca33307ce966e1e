"""zymi-tui: observe and tune the context windows of LLM agents."""

__version__ = "0.1.0"
