def time_to_return(rows, target):
    """(env steps, seconds) of the first row whose return reached `target`; None if none did."""
    for steps, seconds, mean_return in rows:
        if mean_return >= target:  # NaN (no episode finished yet) compares False
            return int(steps), float(seconds)
    return None
