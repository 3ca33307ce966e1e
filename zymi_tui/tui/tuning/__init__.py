"""The tuning screens: knob editor (what-if of one call and its stream's curve), profile
comparison (replay a store under several profiles) and the knob sweep."""
