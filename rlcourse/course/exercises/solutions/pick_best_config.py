def pick_best_config(df, varied):
    """The config (varied column -> value) whose seeds have the best mean last reported return."""
    metric = "env_runners/episode_return_mean"
    # Each trial's last reported iteration (rows may come in any order).
    last = df.sort_values("training_iteration").groupby("trial_id").tail(1)
    # Errored trials report NaN: leave them out, then average each config's seeds.
    means = last.dropna(subset=[metric]).groupby(list(varied))[metric].mean()
    best = means.idxmax()
    best = best if isinstance(best, tuple) else (best,)
    return dict(zip(varied, best, strict=True))
