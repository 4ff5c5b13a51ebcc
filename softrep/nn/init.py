"""softrep.nn.init"""
