"""A small data summary using only the standard library.

Fourteen days of (made-up) sales from a corner bakery: descriptive
statistics, the trend, and the best day, printed as a table and as JSON.
"""
import json
import statistics as st

days = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"] * 2
loaves = [112, 98, 105, 121, 143, 187, 164, 118, 101, 110, 126, 151, 196, 171]

mean = st.mean(loaves)
slope, intercept = st.linear_regression(range(len(loaves)), loaves)
best = max(range(len(loaves)), key=loaves.__getitem__)
weekend = [n for d, n in zip(days, loaves) if d in ("Sat", "Sun")]
weekday = [n for d, n in zip(days, loaves) if d not in ("Sat", "Sun")]

print("loaves sold over 14 days")
print(f"  {'mean':<10}{mean:8.1f}")
print(f"  {'median':<10}{st.median(loaves):8.1f}")
print(f"  {'stdev':<10}{st.stdev(loaves):8.1f}")
print(f"  {'quartiles':<10}{'  '.join(f'{q:.0f}' for q in st.quantiles(loaves, n=4))}")
print(f"  {'trend':<10}{slope:+8.2f} loaves/day")
print(f"  weekend sells {st.mean(weekend) / st.mean(weekday):.2f}x a weekday")
print()
print(json.dumps({
    "days": len(loaves),
    "total": sum(loaves),
    "mean": round(mean, 2),
    "best_day": {"day": best + 1, "weekday": days[best], "loaves": loaves[best]},
    "trend_per_day": round(slope, 3),
}, indent=2))
