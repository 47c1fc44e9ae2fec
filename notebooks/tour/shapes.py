"""A tiny module for the tour's code-search tools to look at."""


def area(width, height):
    return width * height


def square(side):
    return area(side, side)


class Box:
    def __init__(self, width, height, depth):
        self.width, self.height, self.depth = width, height, depth

    def volume(self):
        return area(self.width, self.height) * self.depth
