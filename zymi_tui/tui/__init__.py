"""The Textual dashboard (`zymi-tui observe`). Pure models live in model*.py; widgets never do IO."""
