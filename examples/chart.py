# A chart from a pandas DataFrame, saved in the working directory: the
# file comes back as an artifact of the run.
import pandas as pd
import matplotlib.pyplot as plt

sales = pd.DataFrame({
    "month": ["Jan", "Feb", "Mar", "Apr", "May", "Jun"],
    "units": [120, 135, 160, 152, 181, 205],
})
sales["growth_%"] = sales["units"].pct_change().mul(100).round(1)
print(sales.to_string(index=False))
ax = sales.plot(x="month", y="units", marker="o", title="Units sold per month", legend=False)
ax.set_ylabel("units")
plt.savefig("units.png", dpi=100, bbox_inches="tight")
print("best month:", sales.loc[sales["units"].idxmax(), "month"])
