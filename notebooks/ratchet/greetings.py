"""A small module for the ratchet notebook to search."""


def greet(name):
    return f"hello, {name}"


def farewell(name):
    return f"goodbye, {name}"


def greet_all(names):
    return [greet(name) for name in names]
