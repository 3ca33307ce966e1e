"""zymi's events and their stores: each kind declared once, the fast row readers derived from it."""
