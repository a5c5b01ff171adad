"""What repositories say of files: `codescout hits` and `rank_workspace_hits` on real checkouts,
hostile ones included."""
