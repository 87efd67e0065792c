"""Reproductions of the paper's experiments (each module adds an `ecrm reproduce` sub-command)."""
