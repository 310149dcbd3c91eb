"""Online Decision Transformer's backend modules (``odt``): DT's cells with a stochastic head and an online phase."""
