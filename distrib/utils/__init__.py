"""Utilities around training: ``distrib.utils.tensorboard``."""
