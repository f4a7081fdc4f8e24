"""`verimath ablate`: DAPO's controls switched on and off over seeds (variants, runs,
statistics, report)."""
