"""Environments: from a recipe's env fields to a running, checked, resumable environment.

``spec`` what a recipe asks of its environment, and resolving its id · ``suites`` the suites behind an
optional extra (MuJoCo, Box2D, the ALE, MinAtar) · ``wrappers`` the wrapper chain recipe fields ask for ·
``factory`` making one environment or a vector of training copies, probing spaces · ``check`` the Gymnasium
contract, checked on what an environment returns · ``state`` an environment's state for checkpoints ·
``multiagent`` MPE and VMAS ids and spaces · ``evaluation`` the deterministic evaluation loop every cell uses ·
``multiagent_evaluation`` its multi-agent counterpart.
"""
