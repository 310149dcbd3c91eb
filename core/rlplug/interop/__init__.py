"""Neighbours' formats, both ways: rlplug recipes from and as other tools' configurations.

``translation`` one row per translated key: what it became, or why it was dropped · ``zoo`` RL Baselines3 Zoo's
tuned hyperparameters as ``zoo:ALGO/ENV`` recipes · ``skrl_runner`` a skrl Runner YAML file as a recipe ·
``torchrl_hydra`` a recipe as a config in TorchRL's structured-config groups · ``hydra_app`` ``rlplug-hydra``:
recipes as Hydra configs, sweeps on Hydra's launchers.
"""
