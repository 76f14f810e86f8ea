"""Reports: tables and plots, read only from the store."""
