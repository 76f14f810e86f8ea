"""Where generation runs: in this process (`local`, the default) or on a Ray cluster (`ray`)."""
