"""The Textual dashboard (`zymi-tui observe`). What it shows lives in state/ as plain data; widgets never do IO."""
