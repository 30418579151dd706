"""Results: the store of runs, published MLPerf results, compare, cost, energy, diff."""
