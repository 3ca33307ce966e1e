"""zymi-tui's agent engine: loads a zymi project, runs its pipelines and records what zymi records."""
