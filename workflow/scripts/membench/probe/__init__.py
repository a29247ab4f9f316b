"""The host as it is: topology (every cache instance), settings read and
never changed, the sources of the theoretical peak.
"""
