"""Serving a trained policy with Ray Serve (lesson 08): PolicyClient -> Serve's HTTP proxy ->
PolicyDeployment replica -> @serve.batch -> RLModule. `import rlcourse` never imports Serve."""
