"""Environments: from a recipe's env fields to a running, checked, resumable environment.

``factory`` making (vector) environments from a recipe's fields · ``check`` the Gymnasium contract, checked on
what an environment returns · ``state`` an environment's state for checkpoints · ``multiagent`` MPE and VMAS
ids and spaces · ``evaluation`` the deterministic evaluation loop every cell uses · ``multiagent_evaluation``
its multi-agent counterpart.
"""
