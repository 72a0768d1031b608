"""Reports: Allure results, plots and the HTML summary."""
