"""diffill.infill"""
