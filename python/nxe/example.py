"""The README's Python example, run by `nxe example`; a test keeps the two identical."""

import numpy as np

import nxe

g = nxe.Graph()
x = g.input("x", (2, 3), "f32")
b_value = np.array([0.5, -1.0, 2.0], np.float32)
y = g.Relu(g.Add(x, g.constant(b_value, name="b")))
g.mark_output(y, name="y")

exe = g.compile(threads=1)
x_value = np.array([[1.0, -2.0, 3.0], [-4.0, 5.0, -6.0]], np.float32)
print(exe.run({"x": x_value})["y"])
