def worker_start_command(head_address, num_cpus, resource):
    """The command a new machine runs to join the cluster at `head_address`."""
    # --resources takes a JSON object (double quotes inside), in single quotes for the shell.
    return (f"ray start --address={head_address} --num-cpus={num_cpus} "
            f"""--resources='{{"{resource}": 1}}'""")
