"""softrep.optim"""

class Optimizer:
    pass
