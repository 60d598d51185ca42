"""Report: Tables 1, 2, 5, Figures 1, 3, 4, the rollout headline and the per-sample difficulty
view, from run histories (DuckDB), evaluation files and MLflow. ``vade report`` is the entry."""
