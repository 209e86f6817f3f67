"""External simulators: envs that run outside Ray and connect to a runner over TCP (RLlib's
`rllib/env/external/`): the protocol (rllink.py), the server runner and the standalone client."""
