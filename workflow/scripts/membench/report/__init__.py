"""The report's context and rendering; templates (reports/) hold the markup.
"""
