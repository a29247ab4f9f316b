"""Measuring: a round runs the harness once per repetition, keeps what is
stored by content (identity), moves what must be measured again aside
(superseded), holds the machine's lock and stops cleanly on a signal.
"""
