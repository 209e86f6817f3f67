def speedup_and_efficiency(throughputs):
    """Speed-up over 1 runner and scaling efficiency, per runner count in `throughputs`."""
    speedups = {n: throughputs[n] / throughputs[1] for n in throughputs}
    efficiencies = {n: speedups[n] / n for n in throughputs}
    return speedups, efficiencies
