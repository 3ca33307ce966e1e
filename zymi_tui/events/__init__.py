"""zymi's events and their stores: every kind and the envelope declared once, as msgspec structs
(the one model style of this layer), from which each reader's decoders are derived."""
