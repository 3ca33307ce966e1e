"""The context engine: knobs and profiles, the ContextBuilder, Layer A from a project, tokens."""
