"""pytest hooks for reports (filled in by the reports work)."""
