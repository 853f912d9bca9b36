"""The ``python -m hsskern demo`` run."""


def run_demo():
    print("hsskern demo: the HSS SVM (HSSSVC) is not implemented yet; "
          "this command will train a C grid on ijcnn1 once it lands.")
    return 0
