"""Files zymi-tui ships and reads at run time: bashlex tables, default prices, sample stores, the web page."""
