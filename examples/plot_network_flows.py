"""
Network flows under the absolute loss
=====================================

Predict network flows under the absolute loss, which has no linear form, and compare
ECRM's exact conditional risk with the Bayes risk and with that of the conditional mean flow.

The outputs are unit flows from ``s`` to ``t`` on the six-node network of the paper's
Section 6.2 (:func:`ecrm.spaces.flows.paper_network`): a point of the flow polytope
(:class:`~ecrm.FlowPolytope`). The absolute loss :math:`\\sum_a |y_a - y'_a|` has no linear
form, so ECRM minimises the estimated risk :math:`\\sum_i w_i(x) \\|y - y_i\\|_1` over the
polytope directly (an LP when the weights are non-negative, otherwise a certified local
method with an exact MILP fallback). The inputs drive a logit path-choice model whose
conditional distribution is known exactly (:func:`ecrm.datasets.simulate_flows`), so every
risk below is exact and comparable with the Bayes risk.
"""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from ecrm import ECRM
from ecrm.datasets import simulate_flows
from ecrm.losses import AbsoluteLoss
from ecrm.spaces import paper_network

space = paper_network()
X, Y, model = simulate_flows(2000, random_state=0, return_model=True)
ecrm = ECRM(AbsoluteLoss(), space, kernel="rbf", gamma=0.01, alpha=1e-5).fit(X, Y)

# %%
# The predicted flow at one input, beside the Bayes-optimal flow
# --------------------------------------------------------------
x = np.full((1, 20), 0.75)
y_hat = ecrm.predict(x)[0]
bayes_risk, y_bayes = model.bayes(x[0], "absolute")
print(f"{'arc':<8}{'ECRM':>8}{'Bayes':>8}{'mean':>8}")
for (tail, head), a, b, mu in zip(space.arcs, y_hat, y_bayes, model.mean(x)[0], strict=True):
    print(f"{tail}->{head:<5}{a:>8.3f}{b:>8.3f}{mu:>8.3f}")
risk = model.conditional_risk(x[0], y_hat[None], "absolute")[0]
print(f"conditional absolute risk at x = 0.75: ECRM {risk:.4f}, Bayes {bayes_risk:.4f}")

# %%
# Excess risk along the diagonal of the input cube
# ------------------------------------------------
# For inputs ``x = (t, ..., t)``: the exact conditional absolute risk of ECRM's prediction,
# of the conditional mean flow (what a regression of the flows estimates at best) and of
# the Bayes-optimal flow.
ts = np.linspace(0.05, 0.95, 13)
Xd = np.repeat(ts[:, None], 20, axis=1)
pred = ecrm.predict(Xd)
curves = {"ECRM": [], "conditional mean": [], "Bayes": []}
for xt, yt in zip(Xd, pred, strict=True):
    curves["ECRM"].append(model.conditional_risk(xt, yt[None], "absolute")[0])
    curves["conditional mean"].append(
        model.conditional_risk(xt, model.mean(xt[None]), "absolute")[0])
    curves["Bayes"].append(model.bayes(xt, "absolute")[0])
gap = np.clip(np.array(curves["ECRM"]) / np.array(curves["Bayes"]) - 1, 0, None)
print(f"ECRM's risk above Bayes along the diagonal: median {np.median(gap):.1%}, "
      f"max {gap.max():.1%}")

# %%
# Pictures: the network with ECRM's flow at x = 0.75, and the risks
# -----------------------------------------------------------------
pos = {"s": (0, 0), "a": (1, 1), "b": (1, -1), "c": (2, 1), "d": (2, -1), "t": (3, 0)}
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
for (tail, head), f in zip(space.arcs, y_hat, strict=True):
    (x0, y0), (x1, y1) = pos[tail], pos[head]
    ax1.annotate("", xy=(x1, y1), xytext=(x0, y0),
                 arrowprops={"arrowstyle": "-|>", "lw": 0.5 + 8 * f, "shrinkA": 12,
                             "shrinkB": 12, "color": plt.cm.viridis(f)})
    if f > 0.005:  # label the arcs that carry flow
        ax1.text((x0 + x1) / 2, (y0 + y1) / 2 + 0.08, f"{f:.2f}", ha="center", fontsize=9)
for node, (px, py) in pos.items():
    ax1.plot(px, py, "o", ms=22, mfc="white", mec="k")
    ax1.text(px, py, node, ha="center", va="center", fontsize=12)
ax1.set(xlim=(-0.4, 3.4), ylim=(-1.4, 1.4), title="ECRM's predicted flow at x = 0.75")
ax1.axis("off")
for name, values in curves.items():
    ax2.plot(ts, values, "o-" if name != "Bayes" else "k--", label=name)
ax2.set(xlabel="t (input x = (t, ..., t))", ylabel="exact conditional absolute risk",
        title="Risk of each prediction along the diagonal")
ax2.legend()
fig.tight_layout()
