import zlib

OPPONENTS = ("main_v0", "main_v1", "main_v2")  # the frozen snapshots of main: the league


def self_play_mapping(agent_id, episode, **kwargs):
    """main plays one player of every episode and a snapshot the other; the episode decides which."""
    h = zlib.crc32(episode.id_.encode())  # the same number in every process (hash() of a str is not)
    main_side = ("player_0", "player_1")[h % 2]  # the lowest bit: main's side, a fair coin
    if agent_id == main_side:
        return "main"
    return OPPONENTS[h // 2 % len(OPPONENTS)]  # the other bits: which snapshot it plays
